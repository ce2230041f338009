/// How a box's size is written in its header (ISO/IEC 14496-12, 4.2).
public enum BoxSizeForm: Hashable, Sendable {
    /// A 32-bit size, or `size == 1` and a 64-bit `largesize` when the box is larger than 4 GiB − 1.
    case automatic
    /// `size == 1` and a 64-bit `largesize`, whatever the box's size.
    case large
    /// `size == 0`: the box runs to the end of its container (or of the file); only the last box may use it.
    case toEnd
}

/// One box read from a buffer: its type, its header form, and either its children (for the container boxes the
/// reader knows) or its body as raw bytes (every other box, known or not, so that nothing is lost).
///
/// Writing a `Box` with ``BoxWriter`` gives back the bytes it was read from.
public struct Box: Hashable, Sendable {
    /// What a box holds after its header.
    public enum Content: Hashable, Sendable {
        /// The body bytes, as read (including a full box's version and flags).
        case data([UInt8])
        /// The boxes inside a container box.
        case children([Box])
    }

    /// The box type; `uuid` for a box with an extended type.
    public var type: FourCC
    /// The 16-byte extended type of a `uuid` box.
    public var userType: [UInt8]?
    /// How the header states the size.
    public var sizeForm: BoxSizeForm
    /// The body.
    public var content: Content

    public init(type: FourCC, userType: [UInt8]? = nil, sizeForm: BoxSizeForm = .automatic, content: Content) {
        self.type = type
        self.userType = userType
        self.sizeForm = sizeForm
        self.content = content
    }

    /// The children of a container box (empty for a box read as data).
    public var children: [Box] {
        if case .children(let children) = content { return children }
        return []
    }

    /// The body bytes of a box read as data (empty for a container).
    public var data: [UInt8] {
        if case .data(let data) = content { return data }
        return []
    }

    /// The first child of the given type.
    public func child(_ type: FourCC) -> Box? { children.first { $0.type == type } }

    /// The first box at the end of a path of types below this one, e.g. `["trak", "mdia", "mdhd"]`.
    public func descendant(_ path: [FourCC]) -> Box? {
        var box = self
        for type in path {
            guard let next = box.child(type) else { return nil }
            box = next
        }
        return box
    }
}

extension Box: MP4Box {
    public var fullBoxHeader: FullBoxHeader? { nil }

    public func writeBody(to writer: inout BoxWriter) {
        switch content {
        case .data(let data): writer.append(data)
        case .children(let children):
            for child in children { writer.write(child) }
        }
    }
}

extension Array where Element == Box {
    /// The first box of the given type.
    public func first(_ type: FourCC) -> Box? { first { $0.type == type } }
}
