-- Which code computed a run's published rows, and when: a measurement, or a reprocess of its stored
-- raw results with later code (llmbench reprocess). Rows published before this column existed
-- have computed_by NULL: unknown code.
ALTER TABLE llmbench.runs ADD COLUMN IF NOT EXISTS computed_by VARCHAR;
ALTER TABLE llmbench.runs ADD COLUMN IF NOT EXISTS computed_at TIMESTAMPTZ;
ALTER TABLE llmbench.runs ADD COLUMN IF NOT EXISTS computation VARCHAR;
ALTER TABLE llmbench.runs ADD COLUMN IF NOT EXISTS reprocess_prices VARCHAR;
COMMENT ON COLUMN llmbench.runs.computed_by IS 'llmbench version + a fingerprint of the code that computes tables from raw results';
COMMENT ON COLUMN llmbench.runs.computation IS 'measure: computed when measured; reprocess: recomputed later from the stored raw results';
COMMENT ON COLUMN llmbench.runs.reprocess_prices IS 'a reprocess: frozen (the prices of the measurement) or current (the prices of the reprocess)';
