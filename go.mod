module github.com/hccl-go/hccl-go

go 1.26.8

require github.com/stretchr/testify v1.12.1

require (
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.25.0 // indirect
)
