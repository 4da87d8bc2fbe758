module dockyard.local/node-images

go 1.26
