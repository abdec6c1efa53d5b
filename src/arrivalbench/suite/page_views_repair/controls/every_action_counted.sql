-- Rule control: the gold, except that events of every action count as page views (the text says a
-- page view is an event with action = 'view').
CREATE TABLE IF NOT EXISTS view_events (
    event_id BIGINT PRIMARY KEY,
    page     VARCHAR,
    day      DATE
);

INSERT INTO view_events
SELECT event_id, page, CAST(ts_event AS DATE)
FROM clicks_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS page_views (
    page  VARCHAR,
    day   DATE,
    views BIGINT,
    PRIMARY KEY (page, day)
);

MERGE INTO page_views AS t
USING (
    SELECT v.page, v.day, count(*) AS views
    FROM view_events v
    SEMI JOIN clicks_batch b
      ON b.page = v.page AND CAST(b.ts_event AS DATE) = v.day
    GROUP BY v.page, v.day
) AS s
ON t.page = s.page AND t.day = s.day
WHEN MATCHED THEN UPDATE SET views = s.views
WHEN NOT MATCHED THEN INSERT (page, day, views) VALUES (s.page, s.day, s.views);
