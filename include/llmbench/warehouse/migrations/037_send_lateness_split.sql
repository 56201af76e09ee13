-- A level's send lateness in two parts (issues 28 and 29): the wait for a free stream, when every
-- one of an open-loop level's max_in_flight was busy (the server's pace held the arrival back: the
-- level was not offered as scheduled), and the client's own lag once a stream was free. Only the
-- client's own lag, or its CPU, marks it saturated; a client that waited on the kernel's run queue
-- at least as long as it ran was starved by the work beside it (the server, on one machine), and
-- its lateness up to 100 ms is the machine's (analysis.metrics.client_saturated).
ALTER TABLE llmbench.requests ADD COLUMN IF NOT EXISTS stream_wait_ms DOUBLE;
COMMENT ON COLUMN llmbench.requests.stream_wait_ms IS 'open loop: the part of send_lag_ms this arrival waited with every stream busy (the in-flight cap held it), ms; send_lag_ms - stream_wait_ms is the client''s own lateness; 0 in a closed loop, NULL before it was measured';
COMMENT ON COLUMN llmbench.requests.send_lag_ms IS 'how late the request went out: actual send - due - connect, ms (the in-flight cap''s wait, stream_wait_ms, included)';
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS client_lag_ms_p99 DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS stream_wait_ms_p99 DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS in_flight_capped BOOLEAN;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS client_runqueue_pct DOUBLE;
ALTER TABLE llmbench.levels ADD COLUMN IF NOT EXISTS client_starved BOOLEAN;
COMMENT ON COLUMN llmbench.levels.client_lag_ms_p99 IS 'p99 of the client''s own send lateness (send_lag_ms - stream_wait_ms), ms: over 10 ms the client set the pace, unless it was starved (client_starved)';
COMMENT ON COLUMN llmbench.levels.stream_wait_ms_p99 IS 'open loop: p99 of the time arrivals waited for a free stream (every one of max_in_flight busy), ms';
COMMENT ON COLUMN llmbench.levels.in_flight_capped IS 'open loop: stream_wait_ms_p99 over 10 ms, the in-flight cap held arrivals back, so the level was not offered at its rate (the capacity search counts such a probe as failing)';
COMMENT ON COLUMN llmbench.levels.client_runqueue_pct IS 'time the client''s event loop waited for a core (kernel run-queue wait, /proc/thread-self/schedstat) as a % of the level''s window; NULL: not measured (not Linux, a level split over processes)';
COMMENT ON COLUMN llmbench.levels.client_starved IS 'the client''s event loop waited for a core at least as long as the client ran: the work beside it (the server on the same machine), not its own, held it back';
COMMENT ON COLUMN llmbench.levels.send_lag_ms_p99 IS 'how late requests went out, p99, ms: the in-flight cap''s wait (stream_wait_ms_p99) and the client''s own lag (client_lag_ms_p99) together';
COMMENT ON COLUMN llmbench.levels.client_saturated IS 'the load generator could not keep up: client CPU >= 70 % of the cores it may use, or its own send lag p99 (client_lag_ms_p99, the in-flight cap''s wait excluded) > 10 ms unless it was starved of a core by the work beside it (client_starved) and stayed within 100 ms; the level measured the client; validation fails it';
