-- Append only events that are new (first copy within the load, absent from the history) in one
-- statement, then roll the history up per user and day, and per day.
CREATE TABLE IF NOT EXISTS click_log (
    event_id BIGINT,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

INSERT INTO click_log
SELECT DISTINCT ON (b.event_id) b.event_id, b.ts_event, b.user_id
FROM clicks_batch b
ANTI JOIN click_log h ON h.event_id = b.event_id
ORDER BY b.event_id, b._arrival_seq;

CREATE OR REPLACE TABLE daily_active_users AS
SELECT day, count(*) AS active_users, sum(n)::BIGINT AS events
FROM (
    SELECT CAST(ts_event AS DATE) AS day, user_id, count(*) AS n
    FROM click_log
    GROUP BY 1, 2
)
GROUP BY day;
