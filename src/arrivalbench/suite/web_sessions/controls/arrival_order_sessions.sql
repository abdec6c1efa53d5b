-- Keeps every click once with the position it was received in, and cuts each user's clicks into
-- sessions walking them in that received order.
CREATE TABLE IF NOT EXISTS click_history (
    event_id    BIGINT PRIMARY KEY,
    arrival_seq BIGINT,
    ts_event    TIMESTAMP,
    user_id     INTEGER
);

INSERT OR IGNORE INTO click_history
SELECT DISTINCT ON (event_id) event_id, _arrival_seq, ts_event, user_id
FROM clicks_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE web_sessions AS
WITH flagged AS (
    SELECT *,
           CASE WHEN ts_event - lag(ts_event) OVER (PARTITION BY user_id ORDER BY arrival_seq)
                     <= INTERVAL 30 MINUTE THEN 0 ELSE 1 END AS opens
    FROM click_history
),
numbered AS (
    SELECT *, sum(opens) OVER (PARTITION BY user_id ORDER BY arrival_seq) AS session_no
    FROM flagged
)
SELECT user_id,
       min(ts_event) AS session_start,
       max(ts_event) AS session_end,
       count(*)      AS events
FROM numbered
GROUP BY user_id, session_no;
