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

CREATE OR REPLACE TABLE daily_sessions AS
WITH gaps AS (
    SELECT user_id, ts_event,
           ts_event - lag(ts_event) OVER (PARTITION BY user_id ORDER BY ts_event, event_id) AS gap
    FROM click_history
)
SELECT CAST(ts_event AS DATE) AS day, count(*) AS sessions, count(DISTINCT user_id) AS users
FROM gaps
WHERE gap IS NULL OR gap > INTERVAL 30 MINUTE
GROUP BY ALL;
