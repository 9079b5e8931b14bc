"""The models a watermark loads, and the one it owns.

* ``loaders``: the generator, the measurement model and the sentence embedder, by short name,
  from the packages or a folder, offline;
* ``gguf``: packaged GGUF models converted once to a transformers folder;
* ``semantic_mapper``: :class:`~watermark.models.semantic_mapper.SemanticMapper`, the mapper
  model (``model.safetensors`` + ``config.json``);
* ``devices``: the device and dtype a watermark runs on;
* ``growing_cache``: a KV cache that grows in place, for the decode loop.
"""
