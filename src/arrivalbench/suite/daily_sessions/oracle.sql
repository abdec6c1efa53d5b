-- Expected daily_sessions: a click opens a session when no click of the same user falls in the
-- 30 minutes before it and no equal-time click of that user has a smaller event_id; count those
-- openings per day.
SELECT CAST(c.ts_event AS DATE)   AS day,
       count(*)                   AS sessions,
       count(DISTINCT c.user_id)  AS users
FROM clicks c
WHERE NOT EXISTS (
        SELECT 1 FROM clicks p
        WHERE p.user_id = c.user_id
          AND p.ts_event < c.ts_event
          AND c.ts_event - p.ts_event <= INTERVAL 30 MINUTE)
  AND NOT EXISTS (
        SELECT 1 FROM clicks q
        WHERE q.user_id = c.user_id
          AND q.ts_event = c.ts_event
          AND q.event_id < c.event_id)
GROUP BY CAST(c.ts_event AS DATE)
