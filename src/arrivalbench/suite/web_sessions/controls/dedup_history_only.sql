-- Stores each click unless its event_id is already in the history, then rebuilds all sessions;
-- a click that appears more than once within one load is stored once per copy.
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

INSERT INTO click_history
SELECT b.event_id, b.ts_event, b.user_id
FROM clicks_batch b
WHERE NOT EXISTS (SELECT 1 FROM click_history h WHERE h.event_id = b.event_id);

CREATE OR REPLACE TABLE web_sessions AS
WITH flagged AS (
    SELECT *,
           CASE WHEN ts_event - lag(ts_event) OVER (PARTITION BY user_id ORDER BY ts_event, event_id)
                     <= INTERVAL 30 MINUTE THEN 0 ELSE 1 END AS opens
    FROM click_history
),
numbered AS (
    SELECT *, sum(opens) OVER (PARTITION BY user_id ORDER BY ts_event, event_id
                               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS session_no
    FROM flagged
)
SELECT user_id,
       min(ts_event) AS session_start,
       max(ts_event) AS session_end,
       count(*)      AS events
FROM numbered
GROUP BY user_id, session_no;
