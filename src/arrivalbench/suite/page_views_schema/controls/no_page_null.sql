-- Rule control: the gold, except that events without a page are counted under a NULL page (the
-- text says 'unknown').
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
SELECT page                      AS page,
       CAST(ts_event AS DATE)    AS day,
       count(*)                  AS views
FROM one_per_event
WHERE action = 'view'
GROUP BY ALL;
