"""``python -m watermark generate|detect|show`` (see :mod:`watermark.cli`)."""

from watermark.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
