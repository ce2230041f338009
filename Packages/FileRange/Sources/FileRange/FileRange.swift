// The FileRange module.
