-- Loads only events at or after the newest event time already loaded, so an event older than that
-- is dropped; a missing page column is filled with NULL.
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER,
    page     VARCHAR,
    action   VARCHAR
);

INSERT INTO click_history BY NAME
SELECT * EXCLUDE (_arrival_seq, _batch_id)
FROM clicks_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM click_history)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE page_daily_views AS
SELECT coalesce(page, 'unknown') AS page, CAST(ts_event AS DATE) AS day, count(*) AS views
FROM click_history
WHERE action = 'view'
GROUP BY ALL;
