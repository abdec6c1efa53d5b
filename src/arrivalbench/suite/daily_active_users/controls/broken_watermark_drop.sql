-- Stores only events at or after the newest event time already stored (a watermark), so an
-- event older than that is dropped.
CREATE TABLE IF NOT EXISTS click_log (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

INSERT OR IGNORE INTO click_log
SELECT DISTINCT ON (event_id) event_id, ts_event, user_id
FROM clicks_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM click_log)
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE daily_active_users AS
SELECT CAST(ts_event AS DATE) AS day, count(DISTINCT user_id) AS active_users, count(*) AS events
FROM click_log
GROUP BY 1;
