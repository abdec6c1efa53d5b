-- Rule control: the gold, except that a gap of exactly 30 minutes starts a new session (the
-- text says it does not).
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

INSERT OR IGNORE INTO click_history
SELECT DISTINCT ON (event_id) event_id, ts_event, user_id
FROM clicks_batch
ORDER BY event_id, _arrival_seq;

CREATE TABLE IF NOT EXISTS web_sessions (
    user_id       INTEGER,
    session_start TIMESTAMP,
    session_end   TIMESTAMP,
    events        BIGINT
);

BEGIN TRANSACTION;

DELETE FROM web_sessions
WHERE user_id IN (SELECT user_id FROM clicks_batch);

INSERT INTO web_sessions
WITH touched AS (
    SELECT event_id, ts_event, user_id
    FROM click_history
    WHERE user_id IN (SELECT user_id FROM clicks_batch)
),
flagged AS (
    SELECT event_id, ts_event, user_id,
           CASE WHEN ts_event - lag(ts_event) OVER w < INTERVAL 30 MINUTE THEN 0 ELSE 1 END AS opens
    FROM touched
    WINDOW w AS (PARTITION BY user_id ORDER BY ts_event, event_id)
),
numbered AS (
    SELECT *,
           sum(opens) OVER (PARTITION BY user_id ORDER BY ts_event, event_id
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS session_no
    FROM flagged
)
SELECT user_id, min(ts_event), max(ts_event), count(*)
FROM numbered
GROUP BY user_id, session_no;

COMMIT;
