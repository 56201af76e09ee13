-- Issue 45: the billed time a target spent being measured. The user pays for every endpoint-second
-- from deploy to teardown; only warm-up, quality and the sweep measure anything.
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS measuring_seconds DOUBLE;
ALTER TABLE llmbench.targets ADD COLUMN IF NOT EXISTS measuring_fraction DOUBLE;
COMMENT ON COLUMN llmbench.targets.measuring_seconds IS 'seconds the endpoint spent in warm-up, quality and the sweep (each stage''s try that succeeded, from events.jsonl; metrics.measuring_seconds)';
COMMENT ON COLUMN llmbench.targets.measuring_fraction IS 'measuring_seconds / endpoint_seconds: the share of the billed endpoint time spent measuring (NULL without an endpoint: a per-token API)';
