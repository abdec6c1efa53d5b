-- Stores only clicks at or after the newest click time already stored (a watermark), so a click
-- older than that is dropped; session openings are recounted from what is stored.
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

INSERT INTO click_history
SELECT event_id, ts_event, user_id
FROM clicks_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM click_history)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE daily_sessions AS
WITH gaps AS (
    SELECT user_id, ts_event,
           ts_event - lag(ts_event) OVER (PARTITION BY user_id ORDER BY ts_event, event_id) AS gap
    FROM click_history
)
SELECT CAST(ts_event AS DATE) AS day, count(*) AS sessions, count(DISTINCT user_id) AS users
FROM gaps
WHERE gap IS NULL OR gap > INTERVAL 30 MINUTE
GROUP BY ALL;
