"""The sketcher engine (Qt-free). Importing this package must not import torch or open3d."""
