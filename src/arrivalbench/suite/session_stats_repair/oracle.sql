-- Expected user_session_stats: session openings are clicks with no click of the same user in the
-- 30 minutes before them (ties at one instant resolved by event_id); each click belongs to the
-- latest opening at or before it, found with a correlated max.
WITH openings AS (
    SELECT c.user_id, c.ts_event AS opened_at
    FROM clicks c
    WHERE NOT EXISTS (
            SELECT 1 FROM clicks p
            WHERE p.user_id = c.user_id
              AND p.ts_event < c.ts_event
              AND c.ts_event - p.ts_event <= INTERVAL 30 MINUTE)
      AND NOT EXISTS (
            SELECT 1 FROM clicks q
            WHERE q.user_id = c.user_id AND q.ts_event = c.ts_event AND q.event_id < c.event_id)
),
assigned AS (
    SELECT c.user_id, c.ts_event,
           (SELECT max(o.opened_at) FROM openings o
            WHERE o.user_id = c.user_id AND o.opened_at <= c.ts_event) AS opened_at
    FROM clicks c
),
per_session AS (
    SELECT user_id, opened_at, count(*) AS events, max(ts_event) AS closed_at
    FROM assigned
    GROUP BY user_id, opened_at
)
SELECT user_id,
       count(*)                                                   AS sessions,
       sum(events)                                                AS events,
       max(epoch(closed_at) - epoch(opened_at))                   AS longest_session_seconds
FROM per_session
GROUP BY user_id
