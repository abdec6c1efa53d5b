"""The hazard-vocabulary scan: every family is caught, by word and in any case; innocent words are not."""

from __future__ import annotations

import pytest

from arrivalbench.leak import VOCABULARY, Leak, scan
from arrivalbench.spec import HAZARDS, get_task

STABLE_TASKS = ("daily_revenue", "customer_state")

# One or more spellings per vocabulary family, each expected to be reported as the whole term.
FAMILIES: dict[str, list[str]] = {
    "late": ["late", "Late", "LATE"],
    "lateness": ["lateness", "Lateness"],
    "late arrival": ["late arrival", "late-arriving", "Late Arrivals"],
    "arrives late": ["arrives late", "arrived late", "arriving late"],
    "out of order": ["out of order", "out-of-order", "Out-Of-Order"],
    "reorder": ["reorder", "reordered", "Reordering"],
    "duplicate": ["duplicate", "duplicates", "duplicated", "DUPLICATION"],
    "dedup": ["dedup", "dedupe", "de-duplicate", "deduplicated"],
    "twice": ["twice", "TWICE"],
    "crash": ["crash", "crashes", "crashed", "Crashing"],
    "retry": ["retry", "retries", "retried", "retrying", "Retry"],
    "backfill": ["backfill", "backfilled", "Backfills"],
    "redeliver": ["redeliver", "re-delivered", "redelivery"],
    "replay": ["replay", "re-play", "replayed", "Replaying"],
    "reprocess": ["reprocess", "re-processed", "reprocessing"],
    "idempotent": ["idempotent", "idempotency", "Idempotence"],
    "at least once": ["at least once", "at-least-once", "AT LEAST ONCE"],
    "exactly once": ["exactly once", "exactly-once"],
    "schema evolution": ["schema evolution", "schema change", "schema changes", "Schema Drift"],
    "watermark": ["watermark", "watermarks", "Watermarking"],
    "adversarial": ["adversarial", "Adversarial"],
}
SPELLINGS = [(family, text) for family, texts in FAMILIES.items() for text in texts]


def terms(text: str) -> list[str]:
    return [leak.term for leak in scan(text)]


def test_every_vocabulary_entry_has_a_family_here() -> None:
    # A new vocabulary entry without test spellings would go unchecked.
    assert len(FAMILIES) == len(VOCABULARY)


def caught_once(leaks: list[Leak], text: str) -> bool:
    """One leak, whose term is the text or (for 'late arrival' spellings) its leading word."""
    return (
        len(leaks) == 1
        and text.lower().startswith(leaks[0].term.lower())
        and len(leaks[0].term) >= 4
    )


@pytest.mark.parametrize(("family", "text"), SPELLINGS)
def test_each_family_is_caught_alone(family: str, text: str) -> None:
    leaks = scan(text)
    assert caught_once(leaks, text), leaks


@pytest.mark.parametrize(("family", "text"), SPELLINGS)
def test_each_family_is_caught_inside_a_sentence_with_punctuation(family: str, text: str) -> None:
    leaks = scan(f"Note: rows may be ({text}), so be careful.")
    assert caught_once(leaks, text), leaks
    assert leaks[0].line == 1


@pytest.mark.parametrize(("family", "text"), [s for s in SPELLINGS if s[0] != "late arrival"])
def test_the_whole_term_is_reported(family: str, text: str) -> None:
    assert terms(text) == [text]


@pytest.mark.parametrize("text", ["late arrival", "late-arriving", "Late Arrivals"])
def test_late_arrival_is_reported_as_the_whole_phrase(text: str) -> None:
    assert terms(text) == [text]


@pytest.mark.parametrize(
    "word",
    [
        "latest",
        "later",
        "translate",
        "collateral",
        "plate",
        "latency",
        "lately",
        "relate",
        "isolate",
        "display",
        "retrieve",
        "retract",
        "crass",
        "duplex",
        "backfire",
        "twin",
        "watermelon",
        "order",
        "ordered",
        "arrival",
        "arrives",
        "schema",
        "replace",
        "process",
        "once",
        "delivery",
        "delivered",
    ],
)
def test_innocent_words_are_not_flagged(word: str) -> None:
    assert scan(word) == []
    assert scan(word.upper()) == []
    assert scan(f"The {word} one.") == []


def test_the_four_classic_false_positives_stay_clean() -> None:
    text = "The latest figure, computed later, may translate into collateral."
    assert scan(text) == []


def test_word_boundaries_inside_longer_words() -> None:
    assert scan("unlate latey") == []
    assert scan("superduplicate") == []
    assert scan("precrash") == []


def test_line_numbers_and_context_are_reported() -> None:
    text = "first line is fine\n  rows can be LATE here  \n\nretry it\r\nand twice, then a crash\n"
    leaks = scan(text)
    assert [(leak.term, leak.line) for leak in leaks] == [
        ("LATE", 2),
        ("retry", 4),
        ("twice", 5),
        ("crash", 5),
    ]
    assert leaks[0] == Leak(term="LATE", line=2, context="rows can be LATE here")
    assert leaks[2].context == "and twice, then a crash"


def test_every_occurrence_is_reported() -> None:
    assert terms("late, late and late again") == ["late", "late", "late"]


def test_empty_text_is_clean() -> None:
    assert scan("") == []
    assert scan("\n\n") == []


@pytest.mark.parametrize("task_id", STABLE_TASKS)
def test_builtin_task_descriptions_are_clean(task_id: str) -> None:
    spec = get_task(task_id).spec
    assert scan(spec.description) == []
    assert scan(spec.title) == []


@pytest.mark.parametrize("hazard", ["duplicate_delivery", "crash_retry", "backfill"])
def test_hazard_identifiers_are_flagged(hazard: str) -> None:
    assert scan(f"see {hazard}") != []


@pytest.mark.parametrize(
    "text", ["late_arrival", "out_of_order", "schema_evolution", "schema-evolution"]
)
def test_snake_case_hazard_identifiers_are_flagged(text: str) -> None:
    assert scan(f"the {text} schedule") != []


def test_every_hazard_name_in_prose_is_flagged() -> None:
    for hazard in HAZARDS:
        prose = hazard.replace("_", " ")
        assert scan(prose) != [], prose


# --- every text an agent is sent, on every engine ---------------------------------------------


def test_every_prompt_of_every_arm_and_engine_is_clean_of_hazards_and_hidden_log_facts() -> None:
    """The scan covers the engine texts too: each silent arm's opening messages on DuckDB, SQLite
    and PostgreSQL name no hazard, and no arm's names a schedule or a fact of a hidden log (its
    seed, its size), whatever the engine."""
    from arrivalbench.agent.prompts import ARMS, WARNED, build_prompt
    from arrivalbench.engines import ENGINES
    from arrivalbench.logs import log_seed, task_log
    from arrivalbench.schedules import REGISTRY
    from arrivalbench.seeds import DEFAULT_SEED
    from arrivalbench.spec import load_suite

    # Hazard schedules are the hazards' names, which the scan covers (and the hints may use).
    hidden_words = [n for n, kind in REGISTRY.items() if kind.group == "benign"] + ["hidden"]
    assert "in_order_stream" in hidden_words
    seen_systems = set()
    for task in load_suite().values():
        hidden = task_log(task, "hidden", DEFAULT_SEED)
        facts = [str(log_seed(task.id, "hidden", DEFAULT_SEED)), f"{hidden.n} events"]
        for engine in ENGINES:
            for arm in ARMS:
                prompt = build_prompt(task, arm, engine)
                seen_systems.add(prompt.system)
                both = prompt.system + "\n" + prompt.user
                assert (scan(both) != []) == (arm in WARNED), (task.id, arm, engine, scan(both))
                for word in hidden_words + facts:
                    assert word not in both.lower(), (task.id, arm, engine, word)
    assert len(seen_systems) == len(ENGINES)  # one system text per engine, shared by every arm


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_hazard_word_in_an_engine_text_is_refused_before_any_model_call(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arrivalbench.agent import prompts

    original = prompts.text

    def planted(name: str) -> str:
        body = original(name)
        return body + "\nRows may arrive late.\n" if name == f"system.{engine}.md" else body

    monkeypatch.setattr(prompts, "text", planted)
    with pytest.raises(prompts.LeakError, match=f"system prompt of arm unhinted on {engine}"):
        prompts.build_prompt(get_task("daily_revenue"), "unhinted", engine)
    assert prompts.build_prompt(get_task("daily_revenue"), "unhinted").system == original(
        "system.md"
    )
