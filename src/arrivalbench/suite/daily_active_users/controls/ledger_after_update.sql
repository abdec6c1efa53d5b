-- Adds each load's new events to per-user, per-day counters, then records the event ids it has
-- applied; the two steps are separate statements, so stopping between them applies the load
-- again on the rerun.
CREATE TABLE IF NOT EXISTS applied_clicks (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS user_day_events (
    day     DATE,
    user_id INTEGER,
    events  BIGINT,
    PRIMARY KEY (day, user_id)
);

INSERT INTO user_day_events
SELECT CAST(ts_event AS DATE), user_id, count(*)
FROM (
    SELECT DISTINCT ON (event_id) *
    FROM clicks_batch
    WHERE event_id NOT IN (SELECT event_id FROM applied_clicks)
)
GROUP BY 1, 2
ON CONFLICT (day, user_id) DO UPDATE SET events = user_day_events.events + excluded.events;

INSERT INTO applied_clicks
SELECT DISTINCT event_id FROM clicks_batch
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE daily_active_users AS
SELECT day, count(*) AS active_users, sum(events) AS events
FROM user_day_events
GROUP BY day;
