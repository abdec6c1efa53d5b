-- Expected web_sessions: a session starts at a click with no click of the same user in the 30
-- minutes before it (nor an equal-time click with a smaller event_id); every click belongs to
-- the nearest start at or before it (ASOF join).
WITH starts AS (
    SELECT c.user_id, c.ts_event AS session_start
    FROM clicks c
    WHERE NOT EXISTS (
            SELECT 1 FROM clicks p
            WHERE p.user_id = c.user_id
              AND p.ts_event < c.ts_event
              AND p.ts_event >= c.ts_event - INTERVAL 30 MINUTE)
      AND NOT EXISTS (
            SELECT 1 FROM clicks q
            WHERE q.user_id = c.user_id
              AND q.ts_event = c.ts_event
              AND q.event_id < c.event_id)
)
SELECT s.user_id,
       s.session_start,
       max(c.ts_event) AS session_end,
       count(*)        AS events
FROM clicks c
ASOF JOIN starts s
  ON c.user_id = s.user_id AND c.ts_event >= s.session_start
GROUP BY s.user_id, s.session_start
