"""Calibration: the table plane and camera-to-table transform from depth, colour balance from the table.

Perception never reads a ground-truth camera pose: everything here is measured from a frame.
"""
