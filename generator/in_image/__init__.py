"""Code that runs inside the user's image, not in the launcher: the reference claim client a runtime copies into its
image (`sandbox_client`) and `dockyard-k8s smoke`'s probe, shipped in the recipe ConfigMap and run on the Ray head
(`smoke_probe`). Each file stands alone and may import nothing of the package: `sandbox_client` the standard library
only, `smoke_probe` the standard library and ray (import-linter's contracts forbid them any other module of the
package and any third-party package the image may lack)."""
