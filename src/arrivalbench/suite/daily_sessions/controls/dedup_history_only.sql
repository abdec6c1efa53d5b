-- Appends the load's clicks whose event_id is not yet stored (a click listed two times in the
-- same load is stored two times), then counts session openings per day: a click opens a session
-- when no click of the user falls in the 30 minutes before it and no click of the user at the
-- same time has a smaller event_id.
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

INSERT INTO click_history
SELECT b.event_id, b.ts_event, b.user_id
FROM clicks_batch b
WHERE NOT EXISTS (SELECT 1 FROM click_history h WHERE h.event_id = b.event_id);

CREATE OR REPLACE TABLE daily_sessions AS
SELECT CAST(c.ts_event AS DATE)  AS day,
       count(*)                  AS sessions,
       count(DISTINCT c.user_id) AS users
FROM click_history c
WHERE NOT EXISTS (
        SELECT 1 FROM click_history p
        WHERE p.user_id = c.user_id
          AND p.ts_event < c.ts_event
          AND p.ts_event >= c.ts_event - INTERVAL 30 MINUTE)
  AND NOT EXISTS (
        SELECT 1 FROM click_history q
        WHERE q.user_id = c.user_id
          AND q.ts_event = c.ts_event
          AND q.event_id < c.event_id)
GROUP BY ALL;
