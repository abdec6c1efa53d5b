-- Keeps each event once in a history with every column, selecting the columns by name: a load
-- whose rows have no `page` column stops the pipeline with a binder error.
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    page     VARCHAR,
    action   VARCHAR
);

INSERT OR IGNORE INTO click_history
SELECT DISTINCT ON (event_id) event_id, ts_event, page, action
FROM clicks_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE page_daily_views AS
SELECT coalesce(page, 'unknown') AS page, CAST(ts_event AS DATE) AS day, count(*) AS views
FROM click_history
WHERE action = 'view'
GROUP BY ALL;
