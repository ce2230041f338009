import Foundation

// Links Foundation on purpose: the linkage check must report it, or the check itself is broken.
print(Date.distantPast)
