-- Keeps a ledger of click ids and the built sessions; new clicks are sessionised together with
-- their user's newest stored session (extending it when close enough), older sessions are never
-- revisited. One transaction per load.
CREATE TABLE IF NOT EXISTS seen_clicks (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS web_sessions (
    user_id       INTEGER,
    session_start TIMESTAMP,
    session_end   TIMESTAMP,
    events        BIGINT
);

BEGIN TRANSACTION;

CREATE TEMP TABLE fresh AS
SELECT DISTINCT ON (event_id) event_id, ts_event, user_id
FROM clicks_batch
WHERE event_id NOT IN (SELECT event_id FROM seen_clicks)
ORDER BY event_id, _arrival_seq;

INSERT INTO seen_clicks SELECT event_id FROM fresh;

CREATE TEMP TABLE newest AS
SELECT *
FROM web_sessions
WHERE user_id IN (SELECT user_id FROM fresh)
QUALIFY row_number() OVER (PARTITION BY user_id ORDER BY session_start DESC) = 1;

DELETE FROM web_sessions s
USING newest n
WHERE s.user_id = n.user_id AND s.session_start = n.session_start;

INSERT INTO web_sessions
WITH pieces AS (
    SELECT user_id, session_start AS piece_start, session_end AS piece_end, events AS n FROM newest
    UNION ALL
    SELECT user_id, ts_event, ts_event, 1 FROM fresh
),
flagged AS (
    SELECT *,
           CASE WHEN piece_start - lag(piece_end) OVER (PARTITION BY user_id ORDER BY piece_start, piece_end)
                     <= INTERVAL 30 MINUTE THEN 0 ELSE 1 END AS opens
    FROM pieces
),
numbered AS (
    SELECT *,
           sum(opens) OVER (PARTITION BY user_id ORDER BY piece_start, piece_end
                            RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS session_no
    FROM flagged
)
SELECT user_id, min(piece_start), max(piece_end), sum(n)
FROM numbered
GROUP BY user_id, session_no;

COMMIT;
