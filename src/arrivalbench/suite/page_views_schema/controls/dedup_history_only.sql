-- Stores an event unless its event_id is already stored (an event sent more than once inside one
-- load is stored each time); a missing page column is filled with NULL.
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT,
    ts_event TIMESTAMP,
    user_id  INTEGER,
    page     VARCHAR,
    action   VARCHAR
);

INSERT INTO click_history BY NAME
SELECT * EXCLUDE (_arrival_seq, _batch_id)
FROM clicks_batch b
WHERE NOT EXISTS (SELECT 1 FROM click_history h WHERE h.event_id = b.event_id);

CREATE OR REPLACE TABLE page_daily_views AS
SELECT coalesce(page, 'unknown') AS page, CAST(ts_event AS DATE) AS day, count(*) AS views
FROM click_history
WHERE action = 'view'
GROUP BY ALL;
