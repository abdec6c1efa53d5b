-- Rule control: the gold, except that a gap of exactly 30 minutes opens a new session (the text
-- says it does not).
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

MERGE INTO click_history AS h
USING (
    SELECT event_id, ts_event, user_id
    FROM clicks_batch
    QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
) AS b
ON h.event_id = b.event_id
WHEN NOT MATCHED THEN INSERT (event_id, ts_event, user_id) VALUES (b.event_id, b.ts_event, b.user_id);

CREATE OR REPLACE TABLE daily_sessions AS
WITH gaps AS (
    SELECT user_id, ts_event,
           ts_event - lag(ts_event) OVER (PARTITION BY user_id ORDER BY ts_event, event_id) AS gap
    FROM click_history
)
SELECT CAST(ts_event AS DATE)   AS day,
       count(*)                 AS sessions,
       count(DISTINCT user_id)  AS users
FROM gaps
WHERE gap IS NULL OR gap >= INTERVAL 30 MINUTE
GROUP BY ALL;
