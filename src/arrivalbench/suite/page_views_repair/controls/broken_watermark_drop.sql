-- Stores only view events at or after the newest event time already stored (a watermark), so a
-- view older than that is dropped.
CREATE TABLE IF NOT EXISTS view_events (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    page     VARCHAR
);

INSERT OR IGNORE INTO view_events
SELECT DISTINCT ON (event_id) event_id, ts_event, page
FROM clicks_batch
WHERE action = 'view'
  AND ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM view_events)
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE page_views AS
SELECT page, CAST(ts_event AS DATE) AS day, count(*) AS views
FROM view_events
GROUP BY ALL;
