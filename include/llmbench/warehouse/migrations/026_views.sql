-- repeatable: re-applied whenever this file changes (llmbench.warehouse.migrate)
-- Speculative decoding's speed-up per concurrency (seed 002: EAGLE3 2.3-2.6x at C=1, 1.2-1.9x at
-- C=32): each speculative target's levels against its baseline in the same run, with the level's
-- acceptance rate where the server exposed it. Defined here, not in 022_views.sql, because it reads
-- the column 025_cold_start_and_server.sql adds (new columns go last: PostgreSQL replaces a view
-- only by appending).
CREATE OR REPLACE VIEW llmbench.v_speculative_speedup AS
SELECT run_key, logical_date, model, instance_type, target_id, speculative_baseline_target_id, concurrency,
       arrival_rate_rps, output_tokens_per_s, speculative_speedup, speculative_ttft_change, speculative_tpot_change,
       ttft_ms_p50, tpot_ms_p50, spec_decode_acceptance_rate
FROM llmbench.price_performance
WHERE speculative_baseline_target_id IS NOT NULL;
