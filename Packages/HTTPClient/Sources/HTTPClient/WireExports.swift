// The client's API speaks in the wire layer's types (headers, methods, statuses), so importing the client brings
// them along.
@_exported public import HTTPWire
