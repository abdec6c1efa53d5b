from arrivalbench.progress import clock, estimate


def test_clock_reads_as_minutes_and_seconds_then_hours():
    assert [clock(s) for s in (0, 5.4, 65, 720, 3723, -3)] == [
        "0:00",
        "0:05",
        "1:05",
        "12:00",
        "1:02:03",
        "0:00",
    ]


def test_the_estimate_is_the_rest_at_the_mean_pace_so_far():
    assert estimate(10, 40, 60.0) == "[10/40, elapsed 1:00, about 3:00 left]"
    assert estimate(40, 40, 240.0) == "[40/40, elapsed 4:00]"  # done: nothing left to estimate
    assert estimate(0, 40, 1.0) == "[0/40, elapsed 0:01]"  # no pace yet
