-- Stores each event unless its event_id is already in the history; an event that appears more
-- than once within one load is stored once per copy.
CREATE TABLE IF NOT EXISTS click_log (
    event_id BIGINT,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

INSERT INTO click_log
SELECT b.event_id, b.ts_event, b.user_id
FROM clicks_batch b
WHERE NOT EXISTS (SELECT 1 FROM click_log h WHERE h.event_id = b.event_id);

CREATE OR REPLACE TABLE daily_active_users AS
SELECT CAST(ts_event AS DATE) AS day, count(DISTINCT user_id) AS active_users, count(*) AS events
FROM click_log
GROUP BY 1;
