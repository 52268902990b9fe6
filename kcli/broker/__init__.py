"""The broker: network layer, request handlers, controller and cluster metadata."""
