-- Rule control: the gold, except that a click opens a session when the user has no click in the
-- 30 minutes strictly before it, so clicks sharing a ts_event can each open one (the text says
-- they belong to the same session).
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

INSERT INTO click_history
SELECT event_id, ts_event, user_id
FROM clicks_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE user_session_stats AS
WITH flagged AS (
    SELECT c.user_id, c.ts_event, c.event_id,
           CASE WHEN EXISTS (
                    SELECT 1 FROM click_history AS p
                    WHERE p.user_id = c.user_id
                      AND p.ts_event < c.ts_event
                      AND p.ts_event >= c.ts_event - INTERVAL 30 MINUTE)
                THEN 0 ELSE 1 END AS opens
    FROM click_history AS c
),
numbered AS (
    SELECT *,
           sum(opens) OVER (PARTITION BY user_id ORDER BY ts_event, event_id
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS session_no
    FROM flagged
),
sessions AS (
    SELECT user_id, count(*) AS events,
           date_diff('second', min(ts_event), max(ts_event)) AS seconds
    FROM numbered
    GROUP BY user_id, session_no
)
SELECT user_id,
       count(*)      AS sessions,
       sum(events)   AS events,
       max(seconds)  AS longest_session_seconds
FROM sessions
GROUP BY user_id;
