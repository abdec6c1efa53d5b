-- Stores only events at or after the newest event time already stored (a watermark), so an
-- event older than that is dropped.
CREATE TABLE IF NOT EXISTS click_log (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER,
    page     VARCHAR,
    action   VARCHAR
);

INSERT INTO click_log
SELECT event_id, ts_event, user_id, page, action
FROM clicks_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM click_log)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE page_users AS
SELECT page, CAST(ts_event AS DATE) AS day, count(DISTINCT user_id) AS users,
       count(*) FILTER (WHERE action = 'view') AS views
FROM click_log
GROUP BY ALL;
