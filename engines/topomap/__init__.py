"""The topomap engine (Qt-free): topographic networks trained with credit-based (CB-SOM) or
activation-based (AB-SOM) self-organisation, TopoLoss, a classic Kohonen SOM, and their maps.

Modules: params (what a run is), data/stimuli (digits, gratings, shapes), model/selforg (torch),
train (the one loop), analysis/maps (d', preferences, pinwheels, smoothness), runfile/runview
(run files and what the panel shows), export, compare (the benchmark), render (colour images).
Importing this package must not import torch.
"""
