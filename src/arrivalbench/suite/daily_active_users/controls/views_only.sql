-- Rule control: the gold, except that only 'view' events count (the text says every action and
-- page counts).
CREATE TABLE IF NOT EXISTS click_log (
    event_id BIGINT,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

INSERT INTO click_log
SELECT DISTINCT ON (b.event_id) b.event_id, b.ts_event, b.user_id
FROM (SELECT * FROM clicks_batch WHERE action = 'view') b
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
