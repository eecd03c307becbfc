// Test images for the real-node suite: small static programs packed as image tarballs (no registry), and the
// packer. Tests only: never part of the product.
module challenge-hooks/controlplane/images

go 1.26.0
