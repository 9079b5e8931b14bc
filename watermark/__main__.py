"""``python -m watermark generate|detect|show`` (see :mod:`watermark.app.cli`)."""

from watermark.app.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
