-- Open-loop levels: a level is keyed by its concurrency and its Poisson arrival rate. A closed-loop
-- level has arrival_rate_rps 0 (no arrival process: each stream sends when its last request
-- ended) and load_mode 'closed'; an open-loop level has its rate, load_mode 'poisson', and its
-- in-flight cap as concurrency.
-- only duckdb
-- DuckDB cannot change a primary key in place: each table is rebuilt with the same rows.
CREATE TABLE llmbench.levels_009 AS SELECT *, CAST(0 AS DOUBLE) AS arrival_rate_rps, 'closed' AS load_mode FROM llmbench.levels;
DROP TABLE llmbench.levels;
ALTER TABLE llmbench.levels_009 RENAME TO levels;
ALTER TABLE llmbench.levels ADD PRIMARY KEY (run_key, target_id, concurrency, arrival_rate_rps);
ALTER TABLE llmbench.levels ALTER COLUMN arrival_rate_rps SET DEFAULT 0;
ALTER TABLE llmbench.levels ALTER COLUMN load_mode SET DEFAULT 'closed';
CREATE TABLE llmbench.requests_009 AS SELECT *, CAST(0 AS DOUBLE) AS arrival_rate_rps FROM llmbench.requests;
DROP TABLE llmbench.requests;
ALTER TABLE llmbench.requests_009 RENAME TO requests;
ALTER TABLE llmbench.requests ADD PRIMARY KEY (run_key, target_id, concurrency, arrival_rate_rps, request_index);
ALTER TABLE llmbench.requests ALTER COLUMN arrival_rate_rps SET DEFAULT 0;
CREATE TABLE llmbench.price_performance_009 AS SELECT *, CAST(0 AS DOUBLE) AS arrival_rate_rps, 'closed' AS load_mode FROM llmbench.price_performance;
DROP TABLE llmbench.price_performance;
ALTER TABLE llmbench.price_performance_009 RENAME TO price_performance;
ALTER TABLE llmbench.price_performance ADD PRIMARY KEY (run_key, target_id, concurrency, arrival_rate_rps);
ALTER TABLE llmbench.price_performance ALTER COLUMN arrival_rate_rps SET DEFAULT 0;
ALTER TABLE llmbench.price_performance ALTER COLUMN load_mode SET DEFAULT 'closed';
-- end
-- only postgres
ALTER TABLE llmbench.levels ADD COLUMN arrival_rate_rps DOUBLE NOT NULL DEFAULT 0;
ALTER TABLE llmbench.levels ADD COLUMN load_mode VARCHAR NOT NULL DEFAULT 'closed';
ALTER TABLE llmbench.levels DROP CONSTRAINT levels_pkey;
ALTER TABLE llmbench.levels ADD PRIMARY KEY (run_key, target_id, concurrency, arrival_rate_rps);
ALTER TABLE llmbench.requests ADD COLUMN arrival_rate_rps DOUBLE NOT NULL DEFAULT 0;
ALTER TABLE llmbench.requests DROP CONSTRAINT requests_pkey;
ALTER TABLE llmbench.requests ADD PRIMARY KEY (run_key, target_id, concurrency, arrival_rate_rps, request_index);
ALTER TABLE llmbench.price_performance ADD COLUMN arrival_rate_rps DOUBLE NOT NULL DEFAULT 0;
ALTER TABLE llmbench.price_performance ADD COLUMN load_mode VARCHAR NOT NULL DEFAULT 'closed';
ALTER TABLE llmbench.price_performance DROP CONSTRAINT price_performance_pkey;
ALTER TABLE llmbench.price_performance ADD PRIMARY KEY (run_key, target_id, concurrency, arrival_rate_rps);
-- end
COMMENT ON COLUMN llmbench.levels.arrival_rate_rps IS 'open loop: Poisson arrival rate, requests/s; 0: a closed-loop level';
COMMENT ON COLUMN llmbench.levels.load_mode IS 'closed (concurrency = streams) or poisson (concurrency = the in-flight cap)';
COMMENT ON COLUMN llmbench.price_performance.arrival_rate_rps IS 'open loop: Poisson arrival rate, requests/s; 0: a closed-loop level';
