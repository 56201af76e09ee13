-- The run's price basis (config price_basis): the $/M it ranks and labels by, per output token or
-- per total (input + output) token (seed 002 prices per total token). Both figures stay on every row.
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS headline_basis VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS usd_per_m_headline DOUBLE;
COMMENT ON COLUMN llmbench.price_performance.headline_basis IS 'the run''s price basis: output or total (config price_basis)';
COMMENT ON COLUMN llmbench.price_performance.usd_per_m_headline IS 'usd_per_m_output_tokens (basis output) or usd_per_m_total_tokens (basis total): what best_under_slo ranks by';
COMMENT ON COLUMN llmbench.price_performance.best_under_slo IS 'the lowest usd_per_m_headline (the run''s price basis) per model among levels meeting the SLO';
