-- Records the load as processed first, so that a load seen before is skipped; the record and the
-- storing of its clicks are separate statements.
CREATE TABLE IF NOT EXISTS processed_batches (batch_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

CREATE TEMP TABLE this_batch AS
SELECT * FROM clicks_batch
WHERE _batch_id NOT IN (SELECT batch_id FROM processed_batches);

INSERT INTO processed_batches
SELECT DISTINCT _batch_id FROM clicks_batch
ON CONFLICT DO NOTHING;

INSERT OR IGNORE INTO click_history
SELECT DISTINCT ON (event_id) event_id, ts_event, user_id
FROM this_batch
ORDER BY event_id, _arrival_seq;

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
