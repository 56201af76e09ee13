-- Economics columns on price_performance (issue: price-performance a BI user can trust).
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS usd_per_m_total_tokens DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS total_tokens_per_s DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS roofline_tokens_per_s DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS decode_tokens_per_s_per_stream DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS roofline_efficiency DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS break_even_api VARCHAR;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS break_even_output_tokens_per_s DOUBLE;
ALTER TABLE llmbench.price_performance ADD COLUMN IF NOT EXISTS beats_api BOOLEAN;
