"""Wall-clock times as the file formats hold them: ISO-8601, and UTC where no offset is given."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(text: str) -> datetime | None:
    """An ISO-8601 time (`Z`, `z` or an offset; none: UTC), or None when the text is not one."""
    text = text.strip()
    try:
        when = datetime.fromisoformat(text[:-1] + "Z" if text.endswith("z") else text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def iso(when: datetime) -> str:
    """A time as FORMAT.md writes it: ISO-8601 in UTC, with `Z` (a time without offset is UTC)."""
    aware = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat().replace("+00:00", "Z")
