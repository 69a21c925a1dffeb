"""What the documents' tests read: a file of the tree, a section of a Markdown text and its fenced
blocks (readme_zh_test.py, readme_vfio_test.py)."""


def read_file(source_dir, path):
    with open(f"{source_dir}/{path}", encoding="utf-8") as f:
        return f.read()


def section(text, title):
    """From the heading `### title` to the next heading of level 2 or 3."""
    start = text.index(f"### {title}\n")
    ends = [e for e in (text.find("\n## ", start), text.find("\n### ", start + 1)) if e != -1]
    return text[start:min(ends) if ends else len(text)]


def fenced_blocks(text, languages):
    """The fenced blocks whose info string is one of `languages` ("" for a bare fence)."""
    found, current, language = [], None, None
    for line in text.splitlines():
        if current is None:
            if line.startswith("```"):
                language, current = line[3:].strip(), []
        elif line.startswith("```"):
            if language in languages:
                found.append("\n".join(current))
            current = None
        else:
            current.append(line)
    return found
