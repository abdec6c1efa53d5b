-- Rule control: the gold, except that a gap of exactly 30 minutes opens a new session (the text
-- says it does not).
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
    SELECT user_id, ts_event, event_id,
           CASE WHEN date_diff('second',
                               lag(ts_event) OVER (PARTITION BY user_id ORDER BY ts_event, event_id),
                               ts_event) < 30 * 60
                THEN 0 ELSE 1 END AS opens
    FROM click_history
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
