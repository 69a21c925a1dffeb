"""The machine's description and the table bench/run prints and writes to bench/RESULTS.md."""

import os
import platform
import subprocess


def describe_machine():
    """CPU model, cores, memory, kernel, OS and the load average when the run started."""
    model = "unknown CPU"
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as meminfo:
        memory_kib = int(next(line for line in meminfo if line.startswith("MemTotal")).split()[1])
    with open("/proc/loadavg") as loadavg:
        load = " ".join(loadavg.read().split()[:3])
    system = "Linux"
    try:
        with open("/etc/os-release") as release:
            fields = dict(line.rstrip("\n").split("=", 1) for line in release if "=" in line)
            system = fields.get("PRETTY_NAME", system).strip('"')
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory": f"{memory_kib / 1024 / 1024:.1f} GiB",
        "kernel": platform.release(),
        "system": system,
        "load": load,
    }


def tool_version(command):
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except OSError:
        return "not found"
    text = (result.stdout + result.stderr).strip().splitlines()
    return text[0] if text else "unknown"


class Table:
    """Rows of: what, figure, baseline measured in the same run, ratio, target and whether it
    holds; each row also records the bench/run section that takes it and how (the command or
    the reading behind the figure)."""

    def __init__(self):
        self.rows = []
        self.section = None  # set by bench/run before each section runs

    def add(self, what, figure, baseline="", ratio="", target="", holds=None, command=""):
        verdict = "" if holds is None else ("holds" if holds else "MISSED")
        self.rows.append((what, figure, baseline, ratio, f"{target} {verdict}".strip(), command,
                          self.section))

    def missed(self):
        return [row[0] for row in self.rows if row[4].endswith("MISSED")]

    def text(self):
        headers = ("what", "figure", "baseline (same run)", "ratio", "target")
        cells = [headers] + [row[:5] for row in self.rows]
        widths = [max(len(str(row[i])) for row in cells) for i in range(len(headers))]
        lines = []
        for index, row in enumerate(cells):
            lines.append("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
            if index == 0:
                lines.append("  ".join("-" * width for width in widths))
        return "\n".join(lines)

    def markdown(self):
        lines = ["| what | figure | baseline (same run) | ratio | target |", "|---|---|---|---|---|"]
        for row in self.rows:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row[:5]) + " |")
        lines += ["", "### How each figure is taken", "",
                  "`bench/run --only SECTION` reruns one section (and starts what it needs); inside it, "
                  "each figure comes from the command or reading below (process IDs and ports are "
                  "those of this run).", ""]
        for section in dict.fromkeys(row[6] for row in self.rows):
            lines.append(f"`bench/run --only {section}`:")
            lines.append("")
            for row in self.rows:
                if row[6] == section and row[5]:
                    lines.append(f"- {row[0]}: {row[5]}")
            lines.append("")
        return "\n".join(lines)


def results_markdown(machine, tools, table, notes, took_seconds, command_line):
    lines = [
        "# Measured figures",
        "",
        f"Written by `{command_line}` (it took {took_seconds:.0f} s). Every ratio compares two figures",
        "taken in the same run, interleaved, on the same machine: other work on the machine slows",
        "both sides alike, so the ratios hold better than the absolute times.",
        "",
        "## Machine",
        "",
        f"- CPU: {machine['cpu']}, {machine['cores']} cores",
        f"- memory: {machine['memory']}",
        f"- kernel: {machine['kernel']} ({machine['system']})",
        f"- load average at the start: {machine['load']}",
    ]
    for name, version in tools.items():
        lines.append(f"- {name}: {version}")
    lines += ["", "## Figures", "", table.markdown(), ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {note}" for note in notes] + [""]
    return "\n".join(lines)
