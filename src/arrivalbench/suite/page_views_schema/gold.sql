-- Append every delivered row as it came (INSERT ... BY NAME fills a column the load lacks with
-- NULL) into a raw table that has every column, then rebuild the rollup from the raw table with
-- one row per event_id (DISTINCT ON), so repeated rows never count more than once.
CREATE TABLE IF NOT EXISTS clicks_raw (
    event_id     BIGINT,
    ts_event     TIMESTAMP,
    user_id      INTEGER,
    page         VARCHAR,
    action       VARCHAR,
    _arrival_seq BIGINT,
    _batch_id    BIGINT
);

INSERT INTO clicks_raw BY NAME
SELECT * FROM clicks_batch;

CREATE OR REPLACE TABLE page_daily_views AS
WITH one_per_event AS (
    SELECT DISTINCT ON (event_id) event_id, ts_event, page, action
    FROM clicks_raw
    ORDER BY event_id, page NULLS LAST, _arrival_seq
)
SELECT coalesce(page, 'unknown') AS page,
       CAST(ts_event AS DATE)    AS day,
       count(*)                  AS views
FROM one_per_event
WHERE action = 'view'
GROUP BY ALL;
