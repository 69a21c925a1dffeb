-- wrk script for bench/run: after the run, one machine-readable line with what the table needs
-- (latencies in microseconds, as wrk records them). Defines no request/response hooks, so wrk's
-- request path stays what it is without a script.
done = function(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d connect_errors=%d read_errors=%d write_errors=%d status_errors=%d timeouts=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    errors.connect, errors.read, errors.write, errors.status, errors.timeout))
end
