-- Rule control: the gold, except that a click opens a session when the user has no click in the
-- 30 minutes strictly before it, so clicks sharing a ts_event can each open one (the text says
-- they belong to the same session).
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
    SELECT c.event_id, c.ts_event, c.user_id,
           CASE WHEN EXISTS (
                    SELECT 1 FROM touched AS p
                    WHERE p.user_id = c.user_id
                      AND p.ts_event < c.ts_event
                      AND p.ts_event >= c.ts_event - INTERVAL 30 MINUTE)
                THEN 0 ELSE 1 END AS opens
    FROM touched AS c
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
