"""From-scratch PyTorch implementation of the Wan 2.1 / 2.2 image-to-video model family.

Only torch, numpy and the standard library are used so the worker image needs no
diffusers/transformers. Parameter names follow the published (original repo) checkpoints.
"""
