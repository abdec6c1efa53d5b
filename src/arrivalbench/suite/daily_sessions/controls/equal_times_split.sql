-- Rule control: the gold, except that an opening is a click with no click of the user in the
-- 30 minutes strictly before it, so clicks sharing a ts_event can each open a session (the text
-- says they belong to the same session).
CREATE TABLE IF NOT EXISTS click_history (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER
);

MERGE INTO click_history AS h
USING (
    SELECT event_id, ts_event, user_id
    FROM clicks_batch
    QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
) AS b
ON h.event_id = b.event_id
WHEN NOT MATCHED THEN INSERT (event_id, ts_event, user_id) VALUES (b.event_id, b.ts_event, b.user_id);

CREATE OR REPLACE TABLE daily_sessions AS
SELECT CAST(c.ts_event AS DATE)   AS day,
       count(*)                   AS sessions,
       count(DISTINCT c.user_id)  AS users
FROM click_history AS c
WHERE NOT EXISTS (
    SELECT 1 FROM click_history AS p
    WHERE p.user_id = c.user_id
      AND p.ts_event < c.ts_event
      AND p.ts_event >= c.ts_event - INTERVAL 30 MINUTE
)
GROUP BY ALL;
