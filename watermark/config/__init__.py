"""The watermark configuration: what a user sets, checked, and read from any version's files.

* ``watermark_config``: :class:`~watermark.config.watermark_config.WatermarkConfig`, six typed
  sections, ``evolve``, ``save`` and ``load``;
* ``sections``: the sections other than the scheme, each field with its kind;
* ``schemes``: the strength rules, one class each, with the gate and the sampling settings;
* ``files``: reading a config file and the one upgrade of the earlier formats;
* ``shipped``: the configs shipped by name (``default``, ``robust``, ``paper``, ``additive``);
* ``keys``: secret keys and references to them (``env:``, ``file:``), and their public ids;
* ``paths``: where relative paths resolve.
"""
