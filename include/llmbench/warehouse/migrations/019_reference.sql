-- What the seed articles state or imply (a config's `reference:` block), one row per figure and
-- run: never an input, only held against what the run measured or computed (view v_reference).
CREATE TABLE IF NOT EXISTS llmbench.reference (
    run_key VARCHAR NOT NULL,
    reference_index INTEGER NOT NULL,
    seed VARCHAR NOT NULL,
    target_id VARCHAR,
    metric VARCHAR,
    concurrency INTEGER,
    value DOUBLE NOT NULL,
    unit VARCHAR NOT NULL,
    says VARCHAR NOT NULL,
    implied BOOLEAN NOT NULL,
    PRIMARY KEY (run_key, reference_index)
);
COMMENT ON COLUMN llmbench.reference.value IS 'the figure the seed article states (or implies, when implied)';
COMMENT ON COLUMN llmbench.reference.metric IS 'the price_performance column it is held against (v_reference), if one';
